# A dynamic host volume (Nomad 1.10+), as `nomad volume create` reads it:
# the mkdir plugin makes a directory on the node it is placed on.
name      = "pgdata"
type      = "host"
plugin_id = "mkdir"
node_id   = "client-1"

capacity_min = "1GiB"

capability {
  access_mode     = "single-node-single-writer"
  attachment_mode = "file-system"
}
