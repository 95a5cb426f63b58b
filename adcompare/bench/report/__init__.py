"""Reports and figures read from results files; they never measure."""
