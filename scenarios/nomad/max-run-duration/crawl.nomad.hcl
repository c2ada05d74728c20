# A batch task that never finishes on its own, cut off by max_run_duration;
# it writes a single-node-writer CSI volume while it runs.
job "crawl" {
  type        = "batch"
  datacenters = ["dc1"]

  group "crawl" {
    max_run_duration = "5m"

    reschedule {
      attempts  = 0
      unlimited = false
    }

    volume "results" {
      type            = "csi"
      source          = "results"
      access_mode     = "single-node-writer"
      attachment_mode = "file-system"
    }

    task "crawler" {
      driver       = "docker"
      kill_timeout = "10s"

      config {
        image = "busybox:1.36"
      }

      volume_mount {
        volume      = "results"
        destination = "/results"
      }

      resources {
        cpu    = 200
        memory = 128
      }
    }
  }
}
