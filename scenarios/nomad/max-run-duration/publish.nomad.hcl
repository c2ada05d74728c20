# A batch job that writes the crawler's volume after it.
job "publish" {
  type        = "batch"
  datacenters = ["dc1"]

  group "publish" {
    volume "results" {
      type            = "csi"
      source          = "results"
      access_mode     = "single-node-writer"
      attachment_mode = "file-system"
    }

    task "upload" {
      driver = "docker"

      config {
        image = "busybox:1.36"
      }

      volume_mount {
        volume      = "results"
        destination = "/results"
      }

      resources {
        cpu    = 100
        memory = 64
      }
    }
  }
}
