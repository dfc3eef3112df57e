"""What an installer asks our release for and gets: the host classes and the bundle each is
served (``selection``, the installer's own rules restated), the bundles a release plans before it
builds them (``planned``), and the release's coverage rules (``coverage``)."""
