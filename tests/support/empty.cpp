// Keeps qvl_test_support a valid library while tests/support has no other source.
