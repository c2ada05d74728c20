count = "three"
