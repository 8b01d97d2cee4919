"""Personal data: find it in text (``detect``) and swap it for placeholders reversibly
(``pseudonym``) so a step may leave the private zone without the values."""
