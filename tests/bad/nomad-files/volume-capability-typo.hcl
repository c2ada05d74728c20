id        = "data"
type      = "csi"
plugin_id = "hostpath-plugin0"

capability {
  access_mode     = "single-node-writer"
  attachment_mod  = "file-system"
}
