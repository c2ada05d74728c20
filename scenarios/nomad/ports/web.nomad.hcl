# A web server on static port 80, with a dynamic metrics port.
job "web" {
  datacenters = ["dc1"]

  group "web" {
    count = 3

    network {
      mode = "bridge"
      port "http" {
        static = 80
        to     = 8080
      }
      port "metrics" {}
    }

    task "nginx" {
      driver = "docker"
      config {
        image = "nginx:1.27"
        ports = ["http", "metrics"]
      }
      resources {
        cpu    = 200
        memory = 128
      }
    }
  }
}
