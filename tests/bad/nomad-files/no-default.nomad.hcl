variable "count" {
  type = number
}

job "example" {
  group "cache" {
    count = var.count

    task "redis" {
      driver = "docker"
    }
  }
}
