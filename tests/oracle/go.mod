module hami-core/tests/oracle

go 1.25
