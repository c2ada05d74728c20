# What `nomad job run -var-file=prod.vars.hcl` gives the job in production.
replicas = 2
volume   = "staging-data"
