"""What a routing policy is: the YAML document, its CEL conditions and the version state
machine of canaries (storage and serving of versions live in ``control.policycenter``)."""
