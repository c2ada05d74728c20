# The job of Nomad issue #10157, as its reporter would write it: two
# allocations of one group mount the same volume, read-only, and the volume
# allows a single reader on a single node.
job "example" {
  datacenters = ["dc1"]

  group "cache" {
    count = 2

    volume "volume0" {
      type      = "csi"
      source    = "test-volume0"
      read_only = true
    }

    network {
      port "db" {
        to = 6379
      }
    }

    task "redis" {
      driver = "docker"

      config {
        image = "redis:7"
        ports = ["db"]
      }

      volume_mount {
        volume      = "volume0"
        destination = "${NOMAD_ALLOC_DIR}/volume0"
      }

      resources {
        cpu    = 500
        memory = 256
      }
    }
  }
}
