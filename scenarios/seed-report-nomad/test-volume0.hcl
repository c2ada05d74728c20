# The volume of the report, as registered with `nomad volume register`.
id        = "test-volume0"
name      = "test-volume0"
type      = "csi"
plugin_id = "hostpath-plugin0"

capability {
  access_mode     = "single-node-reader-only"
  attachment_mode = "file-system"
}
