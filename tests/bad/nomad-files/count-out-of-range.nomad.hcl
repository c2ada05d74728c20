job "example" {
  datacenters = ["dc1"]
  group "cache" {
    count = 4294967296
    task "redis" {
      driver = "docker"
    }
  }
}
