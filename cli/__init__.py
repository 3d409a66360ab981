"""Command modules: the click layers above every stage. Stages never import from here."""
