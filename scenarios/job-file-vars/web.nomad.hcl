# A job file written for several environments, as most real ones are: the
# count and the volume come from variables without defaults, so `nomad job
# run` needs -var / -var-file (Nomad refuses "Unset variable" otherwise).
variable "replicas" {
  type = number
}

variable "volume" {
  type = string
}

variable "datacenter" {
  type    = string
  default = "dc1"
}

job "web" {
  datacenters = [var.datacenter]

  group "web" {
    count = var.replicas

    volume "data" {
      type            = "csi"
      source          = var.volume
      access_mode     = "single-node-writer"
      attachment_mode = "file-system"
    }

    task "web" {
      driver = "docker"

      config {
        image = "nginx"
      }

      volume_mount {
        volume      = "data"
        destination = "/srv"
      }

      resources {
        cpu    = 500
        memory = 256
      }
    }
  }
}
