from bench.classify.run import main

main()
