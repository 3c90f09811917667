"""What a sequence of SentencePiece pieces says about words, shared by preparation and models.

Its modules import only torch and fairseq's `Dictionary`: the models and tasks use them in every
training worker.
"""
