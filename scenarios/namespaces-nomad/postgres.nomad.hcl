# A database job whose namespace is a variable, as teams template one job
# file across environments.
variable "namespace" {
  type    = string
  default = "prod"
}

variable "job" {
  type    = string
  default = "postgres"
}

job "postgres" {
  id        = var.job
  namespace = var.namespace

  group "db" {
    volume "data" {
      type   = "csi"
      source = "pgdata"
      access_mode     = "multi-node-multi-writer"
      attachment_mode = "file-system"
    }

    task "postgres" {
      driver = "docker"

      config {
        image = "postgres:16"
      }

      resources {
        cpu    = 500
        memory = 256
      }
    }
  }
}
