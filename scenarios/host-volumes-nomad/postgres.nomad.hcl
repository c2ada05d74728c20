# A database on a dynamic host volume, and a static one for its TLS
# certificates (`client { host_volume "certs" { read_only = true } }`).
job "postgres" {
  group "db" {
    count = 2

    volume "data" {
      type        = "host"
      source      = "pgdata"
      access_mode = "single-node-single-writer"
    }

    volume "certs" {
      type      = "host"
      source    = "certs"
      read_only = true
    }

    task "postgres" {
      driver = "docker"

      config {
        image = "postgres:16"
      }

      volume_mount {
        volume      = "data"
        destination = "/var/lib/postgresql/data"
      }

      volume_mount {
        volume      = "certs"
        destination = "/etc/certs"
        read_only   = true
      }

      resources {
        cpu    = 500
        memory = 256
      }
    }
  }
}
