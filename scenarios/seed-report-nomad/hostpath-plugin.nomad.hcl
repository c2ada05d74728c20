# A CSI hostpath plugin on every client: a system job whose task serves
# both the node and the controller side (monolith). The hostpath driver
# publishes whatever it is asked to: it does not enforce access modes.
job "csi-plugin" {
  type        = "system"
  datacenters = ["dc1"]

  group "plugin" {
    task "hostpath" {
      driver = "docker"

      config {
        image      = "hostpathplugin:latest"
        privileged = true
        args       = ["--endpoint=${CSI_ENDPOINT}", "--nodeid=${node.unique.name}"]
      }

      csi_plugin {
        id        = "hostpath-plugin0"
        type      = "monolith"
        mount_dir = "/csi"
      }

      resources {
        cpu    = 100
        memory = 64
      }
    }
  }
}
