from hivelore.cli import main

main()
