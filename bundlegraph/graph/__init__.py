"""The build graph as doit sees it: the specs loaded into one context of legs and stages
(``context``) and the glue that hands its tasks to ``dodo.py`` (``dodo_support``)."""
