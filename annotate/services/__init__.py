"""Services: everything between the screens and the store or the statistics. No Textual."""
