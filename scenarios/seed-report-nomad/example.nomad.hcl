# The job of Nomad issue #10157: one group of two allocations that both
# mount test-volume0 read-only, a volume that allows a single reader. The
# request names its access mode, as Nomad 1.1 and later require.
job "example" {
  datacenters = ["dc1"]

  group "cache" {
    count = 2

    volume "volume0" {
      type            = "csi"
      source          = "test-volume0"
      read_only       = true
      access_mode     = "single-node-reader-only"
      attachment_mode = "file-system"
    }

    task "redis" {
      driver = "docker"

      config {
        image = "redis"
      }

      volume_mount {
        volume      = "volume0"
        destination = "/data"
      }

      resources {
        cpu    = 500
        memory = 256
      }
    }
  }
}
