id        = "data-a"
name      = "data-a"
type      = "csi"
plugin_id = "hostpath-plugin0"

capability {
  access_mode     = "single-node-writer"
  attachment_mode = "file-system"
}
