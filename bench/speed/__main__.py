from bench.speed.run import main

main()
