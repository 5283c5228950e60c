"""Mixed precision: jmp-style policies and dynamic loss scaling."""
