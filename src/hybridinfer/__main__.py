from hybridinfer.cli import main

main()
