"""What the merge, package and publish stages use: byte-deterministic archives (``archive``),
the runtime files a bundle ships (``runtimes``) and Authenticode signing (``sign``)."""
