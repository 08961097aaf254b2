"""Stage 6, scheduling: plan steps become block operations in the dependency lists (with the
memory budget that holds some back), and the operations of a planned batch are reused."""
