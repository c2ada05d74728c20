# A batch task that finishes well before its generous max_run_duration.
job "quick" {
  type        = "batch"
  datacenters = ["dc1"]

  group "quick" {
    max_run_duration = "30m"

    task "echo" {
      driver = "docker"

      config {
        image = "busybox:1.36"
      }

      resources {
        cpu    = 100
        memory = 64
      }
    }
  }
}
