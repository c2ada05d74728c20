variable "count" {
  default = 2
}
