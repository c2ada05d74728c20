job "example" {
  datacenters = ["${uuidv5("dns", "dc1")}"]

  group "cache" {
    task "redis" {
      driver = "docker"
    }
  }
}
