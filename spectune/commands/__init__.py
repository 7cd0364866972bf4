"""The ``spectune`` subcommands, one module each: ``add_arguments(parser)`` declares its flags, ``run(args)`` does
the command and returns its exit code. They parse and print only; the work is in the packages below."""
