from bench.paper.run import main

main()
