"""The launch history on the laptop (issue 9): an SQLite file of every launch watched, read back as the
frozen `tui.core.past.Past` value the core's ETA and regression rules use."""
