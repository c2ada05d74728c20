# A sysbatch job on every node, each allocation cut off by max_run_duration.
job "sweep" {
  type        = "sysbatch"
  datacenters = ["dc1"]

  group "sweep" {
    max_run_duration = "5m"

    task "sleep" {
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
