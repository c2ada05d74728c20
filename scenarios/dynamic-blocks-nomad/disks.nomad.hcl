# A job that declares its CSI volumes with a dynamic block, as job files
# that mount one volume per entry of a variable do. Nomad expands it
# before it reads the group (jobspec2 runs hcl's dynblock.Expand on the
# job block), so the group asks for both single-node-writer volumes, with
# count = 2.
variable "disks" {
  type    = map(string)
  default = { a = "data-a", b = "data-b" }
}

job "disks" {
  datacenters = ["dc1"]

  group "db" {
    count = 2

    dynamic "volume" {
      for_each = var.disks
      iterator = disk
      labels   = ["vol-${disk.key}"]

      content {
        type            = "csi"
        source          = disk.value
        access_mode     = "single-node-writer"
        attachment_mode = "file-system"
      }
    }

    task "db" {
      driver = "docker"

      config {
        image = "postgres"
      }

      dynamic "volume_mount" {
        for_each = var.disks
        content {
          volume      = "vol-${volume_mount.key}"
          destination = "/data/${volume_mount.key}"
        }
      }

      resources {
        cpu    = 500
        memory = 256
      }
    }
  }
}
