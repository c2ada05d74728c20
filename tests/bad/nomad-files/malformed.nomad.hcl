job "example" {
  group "cache" {
    count = = 2
  }
}
