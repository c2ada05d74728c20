job "backup" {
  type = "batch"

  periodic {
    cron     = "@daily"
    schedule = "nightly"
  }

  group "run" {
    task "t" {
      driver = "docker"
    }
  }
}
