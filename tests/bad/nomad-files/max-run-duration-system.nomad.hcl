job "agent" {
  type = "system"

  group "agent" {
    max_run_duration = "1h"

    task "agent" {
      driver = "docker"
    }
  }
}
