# A volume registered in the prod namespace (`nomad volume register
# -namespace prod`, or the spec's own namespace).
id        = "pgdata"
name      = "pgdata"
namespace = "prod"
type      = "csi"
plugin_id = "ebs"

capability {
  access_mode     = "multi-node-multi-writer"
  attachment_mode = "file-system"
}
