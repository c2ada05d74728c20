# The hostpath CSI plugin, one instance on every client (a system job). It
# grants every publish: it does not enforce access modes.
job "csi-plugin" {
  type        = "system"
  datacenters = ["dc1"]

  group "csi" {
    task "plugin" {
      driver = "docker"

      config {
        image      = "registry.k8s.io/sig-storage/hostpathplugin:v1.9.0"
        args       = ["--drivername=csi-hostpath", "--endpoint=${CSI_ENDPOINT}", "--nodeid=node-${NOMAD_ALLOC_INDEX}"]
        privileged = true
      }

      csi_plugin {
        id        = "hostpath-plugin0"
        type      = "monolith"
        mount_dir = "/csi"
      }

      resources {
        cpu    = 256
        memory = 128
      }
    }
  }
}
