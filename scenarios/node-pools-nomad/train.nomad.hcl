# A job for the gpu node pool (Nomad 1.6+), as operators partition a
# cluster: only the pool's nodes are its candidates.
job "train" {
  type      = "batch"
  node_pool = "gpu"

  group "train" {
    count = 2

    task "train" {
      driver = "docker"

      config {
        image = "trainer"
      }

      resources {
        cpu    = 3000
        memory = 256
      }
    }
  }
}
