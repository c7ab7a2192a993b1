try:
    from .cli import main
except KeyboardInterrupt:  # Ctrl-C while the modules load: as quiet as later on
    raise SystemExit(130) from None

raise SystemExit(main())
