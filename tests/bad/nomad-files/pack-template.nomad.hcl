job [[ template "job_name" . ]] {
  [[ template "region" . ]]
  datacenters = [[ .my.datacenters | toStringList ]]

  group "app" {
    count = [[ .my.count ]]

    task "server" {
      driver = "docker"
    }
  }
}
