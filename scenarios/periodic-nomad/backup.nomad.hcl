# A periodic batch job as an operator writes it: two cron specs (crons,
# Nomad 1.6.2+), no overlap, read at UTC+1 (Etc/GMT-1 in IANA's POSIX
# sign). It writes one single-node-writer CSI volume.
job "nightly-export" {
  type        = "batch"
  datacenters = ["dc1"]

  periodic {
    crons            = ["0 2 * * *", "30 4 * * *"]
    prohibit_overlap = true
    time_zone        = "Etc/GMT-1"
  }

  group "export" {
    count = 1

    volume "exports" {
      type            = "csi"
      source          = "exports"
      access_mode     = "single-node-writer"
      attachment_mode = "file-system"
    }

    task "export" {
      driver = "docker"

      config {
        image = "registry.example.com/export:1.4"
      }

      volume_mount {
        volume      = "exports"
        destination = "/exports"
      }

      resources {
        cpu    = 500
        memory = 512
      }
    }
  }
}
