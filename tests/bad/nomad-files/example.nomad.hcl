job "example" {
  group "cache" {
    task "redis" {
      driver = "docker"
    }
  }
}
