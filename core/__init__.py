"""The ground's vocabulary: configuration, errors, the pack's typed models and how a pack is
read, natural keys, and how rows become answers and answers are scored. Imports no other
dibench package."""
