"""Generation: skeletons -> selection -> grounding -> analyses -> questions -> validation -> write-back."""
