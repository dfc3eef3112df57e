"""What the merge, package and publish stages use: the runtime files a bundle ships
(``runtimes``) and Authenticode signing (``sign``)."""
