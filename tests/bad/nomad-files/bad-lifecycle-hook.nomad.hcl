job "etl" {
  type = "batch"
  group "etl" {
    task "fetch" {
      driver = "docker"
      lifecycle {
        hook = "prerun"
      }
    }
  }
}
