job "etl" {
  type = "batch"

  group "etl" {
    max_run_duration = "-5m"

    task "extract" {
      driver = "docker"
    }
  }
}
