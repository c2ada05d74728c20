job "web" {
  namespace = ["prod", "staging"]

  group "web" {
    task "web" {
      driver = "docker"
    }
  }
}
